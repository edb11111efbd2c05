#include <stdio.h>

int mod045(int x)
{
    return x + 45;
}
