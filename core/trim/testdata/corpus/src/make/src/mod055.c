#include <stdio.h>

int mod055(int x)
{
    return x + 55;
}
