#include <stdio.h>

int mod073(int x)
{
    return x + 73;
}
