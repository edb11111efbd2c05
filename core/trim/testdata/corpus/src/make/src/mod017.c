#include <stdio.h>

int mod017(int x)
{
    return x + 17;
}
