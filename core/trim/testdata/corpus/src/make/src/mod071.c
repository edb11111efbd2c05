#include <stdio.h>

int mod071(int x)
{
    return x + 71;
}
